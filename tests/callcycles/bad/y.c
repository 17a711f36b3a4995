/* y.c - tools/callcycles.sh's fixture: the middle of x -> y -> z -> x. */
int cc_z(int x);
int cc_y(int x) { return cc_z(x) * 2; }
