#!/usr/bin/env bash
# Installs the Debian packages the tests need: headless Chromium for the dashboard tests,
# OpenSSH (server and client) for the remote-rank tests, and Slurm with munge for the Slurm pool's.
# Runs as root or through sudo; does nothing when everything is already there.
set -euo pipefail
packages=()
command -v chromium >/dev/null 2>&1 || packages+=(chromium)
[ -x /usr/sbin/sshd ] || packages+=(openssh-server)
command -v ssh >/dev/null 2>&1 || packages+=(openssh-client)
[ -x /usr/sbin/slurmctld ] || packages+=(slurmctld)
[ -x /usr/sbin/slurmd ] || packages+=(slurmd)
command -v sbatch >/dev/null 2>&1 || packages+=(slurm-client)
[ -x /usr/sbin/munged ] || packages+=(munge)
if [ ${#packages[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "system-deps: installing ${packages[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${packages[@]}" >/dev/null
fi
