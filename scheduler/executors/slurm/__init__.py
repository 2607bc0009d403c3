"""The Slurm executor (GOGH_EXECUTOR=slurm): GOGH's decisions submitted, signalled and read back
through Slurm's command-line tools. `commands` runs a tool, `parse` reads its output,
`executor` is the Executor built on both. Pure: no Django."""
