# Sourced by the MPI tests (cli_mpi_*.sh): how mpirun runs here, and helpers to compare runs.
# OpenMPI refuses to start as root unless told twice; the suite runs as root in a container (CI too). More ranks
# than cores need --oversubscribe; --bind-to none lets each rank's threads go where the kernel puts them. The
# single-copy mechanism of the shared-memory transport (process_vm_readv, CMA) is not allowed in every container,
# so the tests use copies through shared memory instead (MCA btl_vader_single_copy_mechanism none).
[ -n "${TINYFORMER_MPI_NOTE:-}" ] && echo "note: $TINYFORMER_MPI_NOTE"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
# Each test's own session directory for mpirun, beside its work directory. By default every mpirun of the machine
# shares /tmp/ompi.HOST.UID and the last to leave removes it; one starting just then fails ("A call to mkdir was
# unable to create the desired directory ... File exists", orte_init failed), which CTest's parallel runs of small MPI
# jobs hit (open-mpi/ompi#8510, OpenMPI 4.0-4.1). Seen once here, in a fresh bookworm chroot: the equivalence test's
# first mpirun while the resume test's ran.
export OMPI_MCA_orte_tmpdir_base="${work:?mpi_support.sh: set work first}.ompi"
mkdir -p "$OMPI_MCA_orte_tmpdir_base"
mpirun_np() {  # mpirun_np N CMD...
  local n="$1"; shift
  mpirun --oversubscribe --bind-to none -np "$n" "$@"
}

# losses FILE: every train_loss of a metrics.jsonl, one per line (full precision).
losses() { grep -o '"train_loss":[^,}]*' "$1" | cut -d: -f2; }
# val_loss FILE: the last val_loss.
last_val_loss() { grep -o '"val_loss":[^,}]*' "$1" | tail -1 | cut -d: -f2; }

# max_rel_diff A B: the largest |a - b| / |b| over the lines of two files of numbers (same count, else "count").
max_rel_diff() {
  [ "$(wc -l < "$1")" -eq "$(wc -l < "$2")" ] && [ -s "$1" ] || { echo count; return; }
  paste "$1" "$2" | awk 'function abs(v) { return v < 0 ? -v : v }
    { d = abs($1 - $2) / abs($2); if (d > m) m = d } END { printf "%.3g\n", m }'
}

# within A B BOUND: max_rel_diff A B <= BOUND
within() {
  local d; d=$(max_rel_diff "$1" "$2")
  [ "$d" != count ] && awk -v d="$d" -v b="$3" 'BEGIN { exit !(d <= b) }'
}
