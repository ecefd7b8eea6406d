"""Network of Theseus (paper 6): convert a guide network into a target architecture part by
part, aligning each new module's representation with the guide's (linear CKA or a soft
mutual-nearest-neighbour score)."""
