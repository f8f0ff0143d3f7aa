"""cuport: lint, translate and verify CUDA kernels for HIP (wave64), Vulkan GLSL and OpenCL."""
__version__ = "0.1.0"
