__global__ void k1(cot n, usk) {
 __shared__ float s[64];ync(0xfu, ((1 << 0xffffffffu) ? (blockDim.y != 16) : s[(n) & 63]));