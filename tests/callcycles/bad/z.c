/* z.c - tools/callcycles.sh's fixture: z calls back into x; and calls the
 * leaf w, which is in no cycle. */
int cc_x(int x);
int cc_w(int x);
int cc_z(int x) { return cc_x(x) + cc_w(x); }
