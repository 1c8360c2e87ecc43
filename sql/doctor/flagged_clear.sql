-- flagged_clear: forget the runs of one kind recorded at the last pass (flagged_insert then
-- records this pass's; two statements: in one, a data-modifying CTE's DELETE and the INSERT
-- would race on the same keys).
-- params: scope, kind
DELETE FROM wfctl.doctor_flagged WHERE scope = %(scope)s AND kind = %(kind)s;
