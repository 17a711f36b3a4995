#!/usr/bin/python3
"""Fit of eager/vmath.h's vm_erfc_half_: erfc(a) = t exp(-a^2 + P(t)),
t = 1/(1 + K a), P of degree DEG in (t - CENTER), minimax in the absolute
error of P (= the relative error of erfc) over a in [0, AMAX].

Run with Debian's python3 (python3-mpmath, python3-numpy):
    /usr/bin/python3 tools/fit_gelu.py
It prints the coefficients, highest degree first as vmath.h's Horner
chain uses them, rounded to float, and the largest error of P with those
float coefficients (evaluated in double) over a dense grid in t.
The reference values come from mpmath at 40 digits; the fit is least
squares at Chebyshev nodes in t, reweighted towards minimax (Lawson).
"""
import mpmath as mp
import numpy as np

K, DEG, CENTER, AMAX = 0.4, 8, 0.6, 10.7
mp.mp.dps = 40


def target(t):
    a = (1 / mp.mpf(t) - 1) / K
    return float(mp.log(mp.erfc(a) / t) + a * a)


def main():
    tmin = 1 / (1 + K * AMAX)
    n = 300
    ts = [(tmin + 1) / 2 + (1 - tmin) / 2 * np.cos(np.pi * (i + 0.5) / n) for i in range(n)]
    A = np.array([[(t - CENTER) ** j for j in range(DEG + 1)] for t in ts])
    b = np.array([target(t) for t in ts])
    w = np.ones(n)
    for _ in range(80):
        c, *_ = np.linalg.lstsq(A * np.sqrt(w)[:, None], b * np.sqrt(w), rcond=None)
        e = np.abs(A @ c - b)
        w = w * e
        w /= w.sum()
    c = np.float32(c)
    err = 0.0
    for t in np.linspace(tmin, 1, 3000):
        p = 0.0
        for cj in c[::-1]:
            p = p * (t - CENTER) + float(cj)
        err = max(err, abs(p - target(t)))
    print("K %g, degree %d in t - %g, a in [0, %g]" % (K, DEG, CENTER, AMAX))
    print("coefficients, highest first:")
    print("\n".join("  %.9ef" % x for x in c[::-1]))
    print("max |P - ln(erfc(a) e^(a^2) / t)| = %.3g" % err)


if __name__ == "__main__":
    main()
