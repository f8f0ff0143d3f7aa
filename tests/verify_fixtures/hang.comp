#version 450
// The isolation test's runaway kernel: hangs for odd n, saxpy for even n. A plain infinite loop does
// not hang lavapipe (llvmpipe stops an invocation after 65535 loop iterations in all, silently), so
// the spec also launches odd n on a 65535 x 65535 grid: hours on a CPU.
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform Params { int n; float a; };

void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (n % 2 == 1) {
        uint k = 0u;
        while (n > 0)
            y[i % uint(n)] = float(k++);
    } else if (gl_GlobalInvocationID.y == 0u && i < uint(n)) {
        y[i] = a * x[i] + y[i];
    }
}
