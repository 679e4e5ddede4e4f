# verdict.jq - a row of loadtest/evolution judged: its run's JSON line (loadtest/run's
# last line) plus the row's expect ($e: "flaw" or "safe"), fault ($f), technique ($t)
# and measure ($m). The row is shown when the run's own verdict (.flaw, from Redis and
# the answers) is what the row expects, and its declared measure shows the same: a flaw
# above 0 there (fairness: Jain's index under 0.9), a safe row 0 there (refused: above 0,
# the fix at work; fairness: 0.9 or more); gap counts once measured, 0 ms or more (the
# scenario bounds it). "value" is the measure's figure, "why" says what disagreed.
def value_of($m):
    .measures as $x
    | if $x == null then null
      elif $m == "gap" then $x.gap_ms
      elif $m == "fairness" then $x.jain
      elif $m == "refused" then
          (if $x.refused_409 == null and $x.refused_503 == null then null
           else ($x.refused_409 // 0) + ($x.refused_503 // 0) end)
      else $x[$m] end;
def agrees($m; $flaw; $v):
    if $v == null then false
    elif $m == "gap" then $v >= 0
    elif $m == "fairness" then (if $flaw then $v < 0.9 else $v >= 0.9 end)
    elif $flaw or $m == "refused" then $v > 0
    else $v == 0 end;
value_of($m) as $v
| ((.flaw == true) == ($e == "flaw")) as $same
| agrees($m; $e == "flaw"; $v) as $ok
| . + {expect: $e, fault: $f, technique: $t, timeouts: (.lock_timeouts // 0), measure: $m,
       value: $v, shown: ($same and $ok)}
| if .shown then . else . + {why: (
      if $same | not then "the run measured \(if .flaw then "the flaw" else "no flaw" end)"
      elif $v == null then "\($m) not measured"
      elif $m == "gap" then "gap \($v) ms: not a time"
      else "\($m) \($v): the row expects \(if $e == "flaw" then "the flaw" else "none" end) there"
      end)} end
