#version 450
// Does not compile: the isolation test's compile error.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer Y { float y[]; };

void main()
{
    y[gl_GlobalInvocationID.x] = undefined_function(1.0);
}
