# Print a greeting for the name given as the first argument.
