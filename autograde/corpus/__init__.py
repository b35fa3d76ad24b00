"""The adversarial corpus: hostile and honest submissions the tests grade through the real command (attacks)."""
