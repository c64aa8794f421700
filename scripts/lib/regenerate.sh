# One oracle data item of scripts/setup, rebuilt when the key of what generates
# it (a hash of the generating scripts) changed or its output is missing.
#
#   source scripts/lib/regenerate.sh
#   regenerate --key KEY --stamp FILE --output FILE [--dir DIR] \
#     --log MESSAGE --name NAME --error MESSAGE [OUTPUT HANDLING] -- COMMAND [ARG...]
#
# When STAMP holds KEY and OUTPUT exists: prints "[setup] data: NAME up to date".
# Otherwise prints "[setup] data: MESSAGE" (--log), removes the old output
# (rm -rf DIR with --dir, else rm -f OUTPUT), runs COMMAND, and writes KEY to
# STAMP; if OUTPUT is still missing it prints "[setup] ERROR: MESSAGE" (--error)
# to stderr and exits 1.
#
# OUTPUT HANDLING (what happens to COMMAND's output and exit status):
#   (none)            output shown; a failure stops setup (set -e) with its status
#   --quiet           stdout discarded; a failure stops setup with its status
#   --tolerate        output shown; a failure is ignored (only a missing OUTPUT fails)
#   --drop PATTERN    stdout and stderr shown less the lines grep -v PATTERN drops;
#                     a failure is ignored
#   --drop-stdout PATTERN  as --drop, on stdout only (stderr passes through)
#
# Call it as a plain command (not under if, ||, &&): set -e then still applies
# to COMMAND inside it.
regenerate() {
  local key="" stamp="" output="" dir="" msg="" name="" err="" mode=show pattern=""
  while (($#)); do
    case "$1" in
      --key) key="$2"; shift 2 ;;
      --stamp) stamp="$2"; shift 2 ;;
      --output) output="$2"; shift 2 ;;
      --dir) dir="$2"; shift 2 ;;
      --log) msg="$2"; shift 2 ;;
      --name) name="$2"; shift 2 ;;
      --error) err="$2"; shift 2 ;;
      --quiet) mode=quiet; shift ;;
      --tolerate) mode=tolerate; shift ;;
      --drop) mode=drop; pattern="$2"; shift 2 ;;
      --drop-stdout) mode=drop-stdout; pattern="$2"; shift 2 ;;
      --) shift; break ;;
      *) echo "regenerate: unknown option $1" >&2; exit 2 ;;
    esac
  done
  if [[ -z "$key" || -z "$stamp" || -z "$output" || -z "$msg" || -z "$name" || -z "$err" || $# -eq 0 ]]; then
    echo "regenerate: --key, --stamp, --output, --log, --name, --error and a command are required" >&2
    exit 2
  fi
  if [[ "$(cat "$stamp" 2>/dev/null)" == "$key" && -f "$output" ]]; then
    echo "[setup] data: $name up to date"
    return 0
  fi
  echo "[setup] data: $msg"
  if [[ -n "$dir" ]]; then
    rm -rf "$dir"
  else
    rm -f "$output"
  fi
  case "$mode" in
    show) "$@" ;;
    quiet) "$@" >/dev/null ;;
    tolerate) "$@" || true ;;
    drop) "$@" 2>&1 | grep -v "$pattern" || true ;;
    drop-stdout) "$@" | grep -v "$pattern" || true ;;
  esac
  [[ -f "$output" ]] || { echo "[setup] ERROR: $err" >&2; exit 1; }
  echo "$key" > "$stamp"
}
