/* w.c - tools/callcycles.sh's fixture: a leaf (called, calls nothing of
 * its folder). */
int cc_w(int x) { return x + 3; }
