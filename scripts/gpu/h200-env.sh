# Sourced by the H200 scripts: vLLM 0.26.0 unpacked, compile caches restored, the environment and the
# Llama-3-8B-shaped model (config + tokenizer only: served with --load-format dummy). Sets $model.
[ -d /tmp/gpusite/vllm ] || bash .gpu-stage/unpack.sh
# compile caches (torch.compile, FlashInfer JIT, Triton) of an earlier machine, when carried along:
# a cold first start takes ~220 s, a warm one ~80 s
cache=.gpu-stage/gpu-cache.tgz
[ -f "$cache" ] && [ ! -d ~/.cache/vllm ] && tar -xzf "$cache" -C ~ && echo "restored compile caches from $cache"
export PYTHONPATH="/tmp/gpusite:$PWD" HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 PYTHONUNBUFFERED=1
model=/tmp/models/llama-3-8b
[ -f "$model/config.json" ] || python3 -m tuner.cli make-model --out "$model" --shape llama-3-8b --no-weights
# its config-only 4-bit variant (compressed-tensors W4A16, make-model --w4a16), for the -w4a16 targets
w4a16_model() {
  [ -f "$model-w4a16/config.json" ] || python3 -m tuner.cli make-model --out "$model-w4a16" --shape llama-3-8b \
    --no-weights --w4a16
}

# the compile caches go back with the results, for the next machine
save_compile_caches() { (cd ~ && tar -czf "$OUT/gpu-cache.tgz" .cache/vllm .cache/flashinfer .triton 2>/dev/null) || true; }
