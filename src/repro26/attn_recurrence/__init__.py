"""When can an attention head be replaced by a value-linear recurrence: semiseparable lower
bounds, trained recurrent surrogates and a survey of trained heads (paper 18)."""
