// Particle step with a device function taking a float3& and a struct by const reference, returning a struct.
#define BLOCK 128

struct Params {
    float dt;
    float drag;
    float bounds[2];   // lower and upper wall
};

struct Stats {
    float energy;
    int bounced;
};

__device__ Stats advance(float3& pos, float3& vel, const Params& p) {
    Stats s = {};
    vel.x *= 1.0f - p.drag * p.dt;
    vel.y *= 1.0f - p.drag * p.dt;
    vel.z -= 9.81f * p.dt;
    pos.x += vel.x * p.dt;
    pos.y += vel.y * p.dt;
    pos.z += vel.z * p.dt;
    if (pos.z < p.bounds[0]) { pos.z = p.bounds[0]; vel.z = -vel.z; s.bounced = 1; }
    if (pos.z > p.bounds[1]) { pos.z = p.bounds[1]; vel.z = -vel.z; s.bounced = 1; }
    s.energy = 0.5f * (vel.x * vel.x + vel.y * vel.y + vel.z * vel.z) + 9.81f * pos.z;
    return s;
}

__global__ void particle_step(float* state, float* energy, int n, float dt) {
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i >= n) return;
    Params p = {dt, 0.1f, {0.0f, 10.0f}};
    float3 pos = make_float3(state[6 * i], state[6 * i + 1], state[6 * i + 2]);
    float3 vel = make_float3(state[6 * i + 3], state[6 * i + 4], state[6 * i + 5]);
    Stats s = advance(pos, vel, p);
    state[6 * i] = pos.x;     state[6 * i + 1] = pos.y; state[6 * i + 2] = pos.z;
    state[6 * i + 3] = vel.x; state[6 * i + 4] = vel.y; state[6 * i + 5] = vel.z;
    energy[i] = s.bounced ? -s.energy : s.energy;
}

int main() {
    const int n = 10000;
    float *state, *energy;
    cudaMalloc(&state, 6 * n * sizeof(float));
    cudaMalloc(&energy, n * sizeof(float));
    particle_step<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(state, energy, n, 0.01f);
    cudaDeviceSynchronize();
    return 0;
}
