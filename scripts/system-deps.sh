#!/usr/bin/env bash
# Installs the Debian packages the tests need (headless Chromium for the dashboard tests).
# Runs as root or through sudo; does nothing when everything is already there.
set -euo pipefail
packages=()
command -v chromium >/dev/null 2>&1 || packages+=(chromium)
if [ ${#packages[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "system-deps: installing ${packages[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${packages[@]}" >/dev/null
fi
