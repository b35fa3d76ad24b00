"""One source, many products: everything generated from source/ (products) and the mutant catalogues (catalogue)."""
