#version 450
// Hand-written translation of saxpy.cu in the shape the translator emits (docs/translate-api.md).
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform Params { int n; float a; };

void main()
{
    int i = int(gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x);
    if (i < n) y[i] = a * x[i] + y[i];
}
