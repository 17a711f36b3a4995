/* p.c - tools/callcycles.sh's fixture: p calls q, nothing calls back. */
int cc_q(int x);
int cc_p(int x) { return cc_q(x) - 1; }
