"""Small fixed-size math kernels (quaternions wxyz, 3-vectors, 3x3 matrices)."""
