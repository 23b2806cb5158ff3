# Sourced by the *_env.sh scripts: a venv holding exactly a list of pinned PyPI packages.
#   ensure_pinned_venv LABEL VENV PYTHON VENV_FLAGS IMPORTS PIN...
# makes VENV with `PYTHON -m venv VENV_FLAGS` when it is missing, installs the pins and checks that
# `import IMPORTS` works. A stamp in the venv holding the pin list marks it complete, so a second
# call does nothing and changing the pins reinstalls. Progress goes to stderr, prefixed by LABEL.
ensure_pinned_venv() {
  local label=$1 venv=$2 python=$3 flags=$4 imports=$5
  shift 5
  local pins=("$@") stamp="$venv/.kiln-pins"
  if [[ ! -x "$venv/bin/python" || "$(cat "$stamp" 2>/dev/null)" != "${pins[*]}" ]]; then
    echo "$label: setting up $venv (${pins[*]})" >&2
    # shellcheck disable=SC2086  # flags: none or one word
    [[ -x "$venv/bin/python" ]] || "$python" -m venv $flags "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "${pins[@]}" >&2
    "$venv/bin/python" -c "import $imports" >&2
    echo "${pins[*]}" >"$stamp"
  fi
}
