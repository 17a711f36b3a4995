/* b.c - tools/callcycles.sh's fixture: b calls back into a. */
int cc_a(int x);
int cc_b_one(int x) { return cc_a(x) + 1; }
int cc_b_two(int x) { return x; }
