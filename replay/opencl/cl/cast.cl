/*
 * cast.cl - cast from TI to TO (-DTI=.. -DTO=.., -DCAST(x)=the
 * conversion), with the CPU's rules (eager/kernels_cast.c): float to
 * integer saturates and NaN gives 0 (OpenCL's _sat_rtz conversions do
 * exactly that), to bool is x != 0, bool reads as 0/1.
 */
__kernel void cast_k(__global const TI *x, __global TO *y, long n)
{
    long i = get_global_id(0);
    if (i < n)
        y[i] = CAST(x[i]);
}
