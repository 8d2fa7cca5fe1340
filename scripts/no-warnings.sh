#!/usr/bin/env bash
# `scripts/no-warnings.sh LOG WHAT`: fails when the cargo output in LOG sums up a crate's
# warnings, after printing LOG. The builds that treat warnings as errors use it because
# `RUSTFLAGS="-D warnings"` would build every dependency anew; cargo prints the sum again
# when it reuses a crate that warned. WHAT names the build in the message.
set -euo pipefail

if grep -qE '^warning: `[^`]+` \(.+\) generated [0-9]+ warnings?' "$1"; then
    cat "$1"
    echo "$2 builds with warnings (above): warnings are errors here" >&2
    exit 1
fi
