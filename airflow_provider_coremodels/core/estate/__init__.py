"""The estate model every stage shares: what a dataset, an edge and a finding are, the finding
catalogue, and text made safe to show."""
