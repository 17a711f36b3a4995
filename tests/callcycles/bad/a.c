/* a.c - tools/callcycles.sh's fixture: a and b call each other (a cycle
 * of two files, two functions on one edge). */
int cc_b_one(int x);
int cc_b_two(int x);
int cc_a(int x) { return x > 0 ? cc_b_one(x - 1) + cc_b_two(x - 1) : 0; }
