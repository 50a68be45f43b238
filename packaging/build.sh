#!/usr/bin/env bash
# Build the onedir bundle dist/studio/ with PyInstaller, smoke-test it, print its size.
#
#   packaging/build.sh [--install-desktop]
#
# --install-desktop  also install the menu entry, icon and file types for the current user
#                    (~/.local/share/{applications,icons/hicolor/scalable/apps,mime}).
# VENV, DIST_DIR, WORK_DIR override .venv, dist/ and build/ (all under the project root by default).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
VENV="${VENV:-$ROOT/.venv}"
DIST_DIR="${DIST_DIR:-$ROOT/dist}"
WORK_DIR="${WORK_DIR:-$ROOT/build}"

install_desktop=0
for arg in "$@"; do
    case "$arg" in
        --install-desktop) install_desktop=1 ;;
        -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
        *) echo "unknown option: $arg" >&2; exit 2 ;;
    esac
done

# Same virtual environment as the Makefile, plus the "package" extra (PyInstaller).
if [[ ! -x "$VENV/bin/pyinstaller" ]]; then
    [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade "pip>=24"
    (cd "$ROOT" && "$VENV/bin/python" -m pip install --quiet -e ".[test,package]")
    touch "$VENV/.installed"  # the Makefile's stamp: .[test] is in
fi

echo "== pyinstaller"
start=$SECONDS
"$VENV/bin/pyinstaller" --noconfirm --log-level WARN \
    --distpath "$DIST_DIR" --workpath "$WORK_DIR" "$ROOT/packaging/studio.spec"
echo "built in $((SECONDS - start)) s"

APP="$DIST_DIR/studio/studio"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "== smoke tests"
"$APP" --version
# Offscreen, with a throw-away STUDIO_HOME so the user's settings are neither read nor written.
QT_QPA_PLATFORM=offscreen STUDIO_HOME="$tmp/home" "$APP" screenshot -o "$tmp/shots" >/dev/null
shots=$(find "$tmp/shots" -name '*.png' | wc -l)
if (( shots == 0 )); then
    echo "smoke test failed: studio screenshot wrote no PNG" >&2
    exit 1
fi
echo "screenshot: $shots PNG files"

echo "== bundle"
du -sh "$DIST_DIR/studio"

if (( install_desktop )); then
    data="${XDG_DATA_HOME:-$HOME/.local/share}"
    mkdir -p "$data/applications" "$data/icons/hicolor/scalable/apps" "$data/mime/packages"
    # Point Exec at this bundle, so the entry works without studio on PATH.
    sed "s|^Exec=.*|Exec=\"$APP\" %F|" "$ROOT/packaging/studio.desktop" > "$data/applications/studio.desktop"
    cp "$ROOT/resources/icons/studio.svg" "$data/icons/hicolor/scalable/apps/studio.svg"
    cp "$ROOT/packaging/studio-mime.xml" "$data/mime/packages/studio.xml"
    # Refresh the caches where the tools exist; desktops also pick the files up on next login.
    if command -v update-mime-database >/dev/null; then update-mime-database "$data/mime"; fi
    if command -v update-desktop-database >/dev/null; then update-desktop-database "$data/applications"; fi
    echo "installed $data/applications/studio.desktop"
fi
