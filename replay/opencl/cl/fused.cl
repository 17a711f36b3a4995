/*
 * fused.cl - the body of every fused program is generated (ops_fused.c)
 * and passed as the prefix; this file only names the program.
 */
