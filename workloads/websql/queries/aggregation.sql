-- HiBench's aggregation (Pavlo et al.'s aggregation task): ad revenue per source IP.
-- HiBench: INSERT OVERWRITE TABLE uservisits_aggre SELECT sourceIP, SUM(adRevenue) FROM uservisits GROUP BY sourceIP
-- (uservisits_aggre's columns: sourceIP, sumAdRevenue).
SELECT sourceIP, SUM(adRevenue) AS sumAdRevenue
FROM uservisits
GROUP BY sourceIP
