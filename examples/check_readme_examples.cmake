# Fails when README.md does not contain each example file verbatim.
# Run with -DREADME=<README.md> -DEXAMPLES=<file>|<file>...
file(READ ${README} readme)
string(REPLACE "|" ";" examples "${EXAMPLES}")
foreach(example ${examples})
  file(READ ${example} content)
  string(FIND "${readme}" "${content}" position)
  if(position EQUAL -1)
    message(FATAL_ERROR "README.md does not show ${example} as it is; copy the file into it")
  endif()
endforeach()
message(STATUS "README shows the examples")
