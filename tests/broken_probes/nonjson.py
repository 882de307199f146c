"""A probe that prints a banner instead of JSON (BabelStream's weak spot)."""

print("BabelStream\nVersion: 5.0\nImplementation: CUDA\nCopy 4012.3 GB/s")
