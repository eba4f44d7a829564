"""The checks: an estate model (and the team's waivers and rules files) in, its findings out."""
