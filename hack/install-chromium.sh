#!/usr/bin/env bash
# Chromium and its WebDriver from Debian's packages, for the HTML report's browser test
# (tests/browser) and `make report-screenshot`. Does nothing when both are there.
# Needs root (apt-get); took about 2 minutes on a fresh machine.
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install-chromium.sh: chromium and chromium-driver are missing; run as root or" \
         "apt-get install chromium chromium-driver" >&2
    exit 1
fi
started=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q chromium chromium-driver >/dev/null
echo "install-chromium.sh: chromium and chromium-driver installed in $(( $(date +%s) - started ))s" >&2
