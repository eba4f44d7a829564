"""The I/O floor: bounded reads of input files in, atomic writes of files and retried HTTP requests out."""
