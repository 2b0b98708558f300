#!/bin/sh
# Headless Chromium for the browser tests of the animation page (tests/test_animation.py),
# which skip without it. Installs Debian's package when no Chromium or Chrome is found and
# apt-get may be used (root); otherwise says why and carries on, so the test command works
# on any machine.
for browser in chromium chromium-browser google-chrome google-chrome-stable; do
    command -v "$browser" >/dev/null 2>&1 && exit 0
done
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "install_browser: installing Debian's chromium for the browser tests"
    if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            --no-install-recommends chromium) >/dev/null 2>&1; then
        exit 0
    fi
    echo "install_browser: apt-get could not install chromium; the browser tests will skip"
else
    echo "install_browser: no Chromium found (apt-get install chromium, as root, adds it);" \
         "the browser tests will skip"
fi
exit 0
