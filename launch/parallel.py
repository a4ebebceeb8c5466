"""launch.sh's GPU check for a server that spans several GPUs (tensor x data parallel).

The script pins the GPU group the layout needs: ``CUDA_VISIBLE_DEVICES`` (default: the first ``tp * dp``
GPUs; set it to the group you want) must list exactly that many GPUs, else exit 2 before anything starts.
One GPU (today's configurations) adds nothing: the script stays byte for byte as before.
"""

from __future__ import annotations

from launch.config import ServeConfig


def device_block(config: ServeConfig) -> str:
    """Bash lines that check and export ``CUDA_VISIBLE_DEVICES`` for ``config``'s layout ("" on one GPU)."""
    n = config.gpus
    if n == 1:
        return ""
    tp, dp = config.tensor_parallel_size or 1, config.data_parallel_size or 1
    default = ",".join(str(i) for i in range(n))
    return f"""# the layout measured: tensor parallel {tp} x data parallel {dp} = {n} GPUs
GPUS_NEEDED={n}
CUDA_VISIBLE_DEVICES="${{CUDA_VISIBLE_DEVICES:-{default}}}"
IFS=, read -r -a gpu_ids <<< "$CUDA_VISIBLE_DEVICES"
if [ "${{#gpu_ids[@]}}" != "$GPUS_NEEDED" ]; then
  echo "launch.sh: CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES lists ${{#gpu_ids[@]}} GPUs but this layout" \\
       "(tensor parallel {tp} x data parallel {dp}) needs $GPUS_NEEDED;" \\
       "set CUDA_VISIBLE_DEVICES to $GPUS_NEEDED GPU ids" >&2
  exit 2
fi
export CUDA_VISIBLE_DEVICES
"""
