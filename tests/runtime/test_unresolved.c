// A library needing a function that nothing defines: loading it must fail and name the function
// (bound lazily, it would load, and the first call would end the process).
void kiln_test_function_nothing_defines(void);

void kiln_test_calls_a_missing_function(void) { kiln_test_function_nothing_defines(); }
