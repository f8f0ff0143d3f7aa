// Writes far outside y: on PoCL (CPU) this is a segmentation fault in the worker process, the CPU
// twin of an illegal address on a GPU.
__kernel void saxpy(int n, float a, __global const float* x, __global float* y)
{
    size_t i = get_global_id(0);
    y[i << 36] = a * x[0];
}
