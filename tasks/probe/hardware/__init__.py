"""Microbenchmarks of the chips and the box: GEMM (search, timing, sustained), memory bandwidth,
host<->device copies, storage reads and the input feed, with the timing discipline they share."""
