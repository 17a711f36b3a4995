/*
 * fused.cl - the body of every fused program is generated (fused.c)
 * and passed as the prefix; this file only names the program.
 */
