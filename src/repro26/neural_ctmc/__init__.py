"""Neural CTMC (paper 1): discrete diffusion by exit rate and jump distribution, vs MDLM, SEDD, GIDD."""
