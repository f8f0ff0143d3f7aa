#version 450
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle_relative : enable
// Hand-written translation of warp_reduce.cu: lane = gl_SubgroupInvocationID, one partial per subgroup.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) readonly buffer In { float data_in[]; };
layout(set = 0, binding = 1) writeonly buffer Out { float data_out[]; };
layout(push_constant) uniform Params { int n; };

shared float partial[256];

void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint i = gl_WorkGroupID.x * gl_WorkGroupSize.x + tid;
    uint lane = gl_SubgroupInvocationID;
    float v = (int(i) < n) ? data_in[i] : 0.0;
    for (uint offset = gl_SubgroupSize / 2u; offset > 0u; offset /= 2u)
        v += subgroupShuffleDown(v, offset);
    if (lane == 0u) partial[gl_SubgroupID] = v;
    barrier();
    if (tid == 0u) {
        float s = 0.0;
        for (uint w = 0u; w < gl_NumSubgroups; ++w) s += partial[w];
        data_out[gl_WorkGroupID.x] = s;
    }
}
