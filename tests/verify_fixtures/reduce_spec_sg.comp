#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle_relative : require

// cuport translate --to glsl: kernel `warp_reduce` of tests/verify_fixtures/warp_reduce.cu (fixture: the
// subgroup size as spec constant 4, whose manifests set it, leave it unset, or set it wrong)
// bindings: in=0, out=1; by-value parameters: push constants (4 bytes)

// the CUDA block shape: spec constants 0, 1, 2 (defaults: the launch in the source); dispatch the CUDA grid
layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(constant_id = 4) const uint CUPORT_SUBGROUP_SIZE = 0u;
#define cuport_subgroup_size (CUPORT_SUBGROUP_SIZE != 0u ? CUPORT_SUBGROUP_SIZE : gl_SubgroupSize)

layout(std430, set = 0, binding = 0) readonly buffer in_buf { float in_[]; };
layout(std430, set = 0, binding = 1) writeonly buffer out_buf { float out_[]; };

layout(push_constant, std430) uniform cuport_params
{
    layout(offset = 0) int n;
} pc;

shared float partial[256];

float cuport_shfl_down_float(float v, uint d)
{
    float r = subgroupShuffleDown(v, d);  // every invocation takes part
    return (gl_SubgroupInvocationID + d < cuport_subgroup_size) ? r : v;
}

void main()
{
    const int n = pc.n;
    int i = int(gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x);
    int lane = int(gl_SubgroupInvocationID);
    int warp = int(gl_SubgroupID);
    float v = (i < n) ? in_[i] : 0.0;
    for (int offset = int(cuport_subgroup_size) / 2; offset > 0; offset /= 2) {
        v += cuport_shfl_down_float(v, uint(offset));
    }
    if (lane == 0) {
        partial[warp] = v;
    }
    barrier();
    if (gl_LocalInvocationID.x == 0u) {
        float s = 0.0;
        for (int w = 0; w < (gl_WorkGroupSize.x + cuport_subgroup_size - 1u) / cuport_subgroup_size; ++w) {
            s += partial[w];
        }
        out_[gl_WorkGroupID.x] = s;
    }
}
