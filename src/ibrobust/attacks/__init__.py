"""Adversarial attacks: PGD (l2 / l_inf) with restarts, the universal cluster direction."""
