#!/bin/bash
# hpclz-cc-await: wait, bounded, for one step of the CycleCloud server's first start, as CCWS's installer waits for it
# (Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/install.sh). A slow first start converges; one that never comes
# ends here with one line saying what did not happen, and exit 1 fails the bootstrap visibly.
#   hpclz-cc-await imported FILE  until CycleCloud has imported FILE from its data directory: it takes an imported
#                                 file out of config/data (CCWS waits "until (! ls /opt/cycle_server/config/data/*.txt)",
#                                 timeout 360s, install.sh l.256-257 and l.335-336)
#   hpclz-cc-await https          until CycleCloud answers on https://localhost (CCWS: "timeout 360s bash -c 'until
#                                 (curl -k https://localhost); do sleep 5; done'", install.sh l.262-263)
# Both give up after 360 s as CCWS does (HPCLZ_POLL_SECONDS changes the interval, in tests only).
set -uo pipefail
POLL=${HPCLZ_POLL_SECONDS:-10}
CHECKS=36
what=${1:-}
case "$what" in
  imported)
    file=${2:?hpclz-cc-await imported FILE}
    for _ in $(seq 1 "$CHECKS"); do
      [ -e "$file" ] || exit 0
      sleep "$POLL"
    done
    [ -e "$file" ] || exit 0
    echo "hpclz-cc-await: CycleCloud did not import $file within $((CHECKS * POLL)) s; it is still in its data directory (see /opt/cycle_server/logs/cycle_server.log)" >&2
    ;;
  https)
    for _ in $(seq 1 "$CHECKS"); do
      curl -ksSf -o /dev/null https://localhost && exit 0
      sleep "$POLL"
    done
    curl -ksSf -o /dev/null https://localhost && exit 0
    echo "hpclz-cc-await: CycleCloud did not answer on https://localhost within $((CHECKS * POLL)) s (see /opt/cycle_server/logs/cycle_server.log)" >&2
    ;;
  *)
    echo "hpclz-cc-await: unknown step '$what' (imported FILE | https)" >&2
    ;;
esac
exit 1
