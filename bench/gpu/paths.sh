# Sourced by bench/gpu/run, corpus-bench and gpu-sweep on the GPU machine: where things are there.
# Set any of these before the command to use other folders.
#   PARLEY_GPU_ORT   ONNX Runtime 1.29.0 with its CUDA provider, and an env.sh that puts it and
#                    CUDA 13 / cuDNN 9 on LD_LIBRARY_PATH (docs/benchmarks.md, step 1)
#   PARLEY_GPU_CLI   where `bench/gpu/run install-cli` keeps the parley CLI and its libraries
#   PARLEY_GPU_WORK  the recordings corpus-bench cuts from eval.wav, and the runs' outputs
gpu_ort=${PARLEY_GPU_ORT:-/root/ortgpu}
gpu_cli=${PARLEY_GPU_CLI:-/root/parley-cli}
gpu_work=${PARLEY_GPU_WORK:-/root/corpus-bench}
