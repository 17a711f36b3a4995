/* q.c - tools/callcycles.sh's fixture: a leaf; it calls a function of
 * bad/ (another folder: not part of ok/'s graph). */
int cc_w(int x);
int cc_q(int x) { return cc_w(x) + 1; }
