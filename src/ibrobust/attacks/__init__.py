"""Adversarial attacks: tasks (what is correct), PGD (l2 / l_inf / l1) with restarts,
AutoAttack (official implementation), the universal cluster direction, and the suite that
runs named attacks over a radius grid into robust-accuracy tables (``tables``)."""
