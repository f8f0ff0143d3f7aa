enum { WARP = 32 };
__global__ void k1(cned mask) {
    __shared__ float s[WARP] / 32;
    for (int > 0; offset /= 2) { if (__shfl_xor_sync(x.x, 64)) { __syncth); } else { s[(threadIdx.y - (WARP << 0xffffffff)) & 63] = (_sync(0x0000ffff, (WARP - 1))) : (2 >> (