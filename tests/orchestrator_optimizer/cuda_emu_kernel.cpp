/*
 * cuda_emu_kernel.cpp - one workload's kernel.cu for the CPU (cuda_emu.h),
 * built for one configuration of its tunables and linked with the check
 * (cuda_emu_check.cpp), which is built once per workload.
 *
 * Build: c++ -std=c++17 -c -DWL_<name> -DKERNEL='"path/kernel.cu"' -DNAME=v...
 */
#include "cuda_emu.h"
#include "cuda_emu_kernels.h"

#include KERNEL
