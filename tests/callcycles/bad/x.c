/* x.c - tools/callcycles.sh's fixture: x -> y -> z -> x, a cycle of three. */
int cc_y(int x);
int cc_x(int x) { return x > 0 ? cc_y(x - 1) : 0; }
