"""Triton counterparts of the CUDA stages: triton_kernels/NN_name.py mirrors cuda_kernels/NN_name.cu.

Stage modules start with a digit, so they are loaded with importlib (see study.registry), not imported.
"""
